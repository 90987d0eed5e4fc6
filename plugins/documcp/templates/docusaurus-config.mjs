// Docusaurus site configuration (website/docusaurus.config.js), an ES module.
// Reference: https://docusaurus.io/docs/api/docusaurus-config
// Docusaurus loads this file itself, so ES module syntax works without "type": "module".

import { themes as prismThemes } from "prism-react-renderer";

const siteName = "{{site_name}}";

/** @type {import('@docusaurus/types').Config} */
const config = {
  title: siteName,
  tagline: "{{description}}",
  favicon: "img/favicon.ico",

  // url is the origin; baseUrl is the path the site is served under, with a trailing slash.
  url: "{{site_origin}}",
  baseUrl: "{{base_path}}",

  // GitHub Pages deployment (docusaurus deploy) reads these two.
  organizationName: "{{organization}}",
  projectName: "{{project}}",
  trailingSlash: false,

  onBrokenLinks: "throw",

  i18n: {
    defaultLocale: "{{language}}",
    locales: ["{{language}}"],
  },

  presets: [
    [
      "classic",
      /** @type {import('@docusaurus/preset-classic').Options} */
      ({
        docs: {
          sidebarPath: "./sidebars.js",
          // create-docusaurus puts the site in website/; edit links need that folder.
          editUrl: "{{repository_url}}/edit/{{branch}}/website/",
        },
        blog: false,
        theme: {
          customCss: "./src/css/custom.css",
        },
      }),
    ],
  ],

  themeConfig:
    /** @type {import('@docusaurus/preset-classic').ThemeConfig} */
    ({
      navbar: {
        title: siteName,
        items: [
          // tutorialSidebar is the sidebar create-docusaurus writes into sidebars.js.
          { type: "docSidebar", sidebarId: "tutorialSidebar", position: "left", label: "Docs" },
          { href: "{{repository_url}}", label: "GitHub", position: "right" },
        ],
      },
      footer: {
        style: "dark",
        copyright: `Copyright © ${new Date().getFullYear()} ${siteName}. Built with Docusaurus.`,
      },
      prism: {
        theme: prismThemes.github,
        darkTheme: prismThemes.dracula,
      },
    }),
};

export default config;
